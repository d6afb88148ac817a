"""The Document tab: a long text read as a background job that survives a reload."""
