"""The multilabel task: its planning (``plan``), state (``state``), metrics and label table."""
