module github.com/tollgate-dev/tollgate/bench

go 1.26

require github.com/tollgate-dev/tollgate v0.0.0

replace github.com/tollgate-dev/tollgate => ../
