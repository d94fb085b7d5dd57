module github.com/crsched/crs

go 1.22
