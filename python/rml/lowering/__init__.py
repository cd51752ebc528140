"""What the exporters share: the Builder wrapper every lowering object extends and the
dispatch table (`base`), and the lowering recipes more than one framework needs
(`elementwise`, `layout`, `nn`, `linalg`, `windows`). Each exporter keeps only its own
walk, attribute reading and op table."""
