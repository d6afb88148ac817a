"""The Gradio page: layout.py is its outline and theme.py its look; one package per tab (speak, ab,
documents, history, pronunciation, api_help), voices/ for the voice picker's choices and library, session/
for what a visitor's session holds, common/ for pieces several tabs share."""
