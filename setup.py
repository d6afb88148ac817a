"""The one thing pyproject.toml cannot say: the top-level ``assets/`` folder installs as ``tts_app/assets/voices``.

Everything else (metadata, dependencies, extras, package data patterns) is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["tts_app*"]), "tts_app.assets.voices"],
    package_dir={"tts_app.assets.voices": "assets/voices"},
)
