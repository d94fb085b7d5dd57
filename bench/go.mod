module github.com/crsched/crs/bench

go 1.26.0

require (
	github.com/crsched/crs v1.3.0
	github.com/jackc/puddle/v2 v2.2.3
	golang.org/x/sync v0.25.0
)

replace github.com/crsched/crs => ../
