"""quarto_arena.engines: reference bots built on quarto_arena.protocol, and broken bots for tests."""
