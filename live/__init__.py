"""Live updates: search events appended in the transaction that makes the change, pushed to
open browsers after commit (channel layer or poller), and the websocket that replays and
forwards them. docs/LIVE_UPDATES.md describes the messages."""
