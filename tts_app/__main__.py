import sys

from tts_app.cli.commands import main

sys.exit(main())
