module github.com/tollgate-dev/tollgate

go 1.26
