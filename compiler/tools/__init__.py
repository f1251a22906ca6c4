"""Caller tools: normalisation, projection per dialect, ``tool_choice`` per endpoint, tool
calls in replies, and the pre-send checks of the conversation."""
