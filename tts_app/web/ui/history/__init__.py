"""The History tab: every take of the session, and its zip."""
