module github.com/crsched/crs/verify

go 1.23

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/crsched/crs v1.3.0
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

replace github.com/crsched/crs => ../
