"""Renderers for the experiment pages: plots and Markdown, from results JSON alone."""
