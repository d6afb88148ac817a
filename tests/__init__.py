"""The test suite: a package, so its folders' modules have distinct names and import tests.support by name."""
