"""Text analysis (analysed terms per language) and sentence splitting."""
