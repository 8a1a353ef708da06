"""Analysis of results: statistics and summaries (:mod:`.stats`) and SQL queries
(:mod:`.query`), over the tables that store/ reads. pandas and DuckDB load on first use."""
