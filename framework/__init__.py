"""expspec framework: spec types, loader, schema, builder, runner, tracking, CLI."""
