"""Text and pictures of the table, game records and replays."""
