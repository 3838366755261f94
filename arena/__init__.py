"""quarto_arena.arena: runs engine processes and games, tournaments, statistics and the CLI."""
