import sys

from tts_app.cli import main

sys.exit(main())
