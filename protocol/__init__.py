"""quarto_arena.protocol: the rules of Quarto, their notation and symmetry, the UQI grammar, and the bot SDK.

Nothing here imports the arena; engines build on this package alone.
"""
