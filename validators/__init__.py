"""Checks of outside contracts: the files Hyperloom writes and reads back, and the Agent Skill format."""
