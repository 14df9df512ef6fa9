module github.com/schemaq/schemaq

go 1.26.8

require (
	github.com/pganalyze/pg_query_go/v5 v5.1.0
	google.golang.org/protobuf v1.31.0
)
