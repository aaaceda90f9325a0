"""What perfgraph writes for people and programs: cell tables, Markdown, JSON, CSV, comparison
reports and Parquet files."""
