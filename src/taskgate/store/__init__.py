"""The Store port and its adapters (SQLite, DynamoDB)."""
