"""The ranking task: its planning (``plan``), its state's columns (``state``) and its metrics."""
