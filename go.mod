module github.com/tollgate-dev/tollgate

go 1.26.0

require (
	github.com/dunglas/httpsfv v1.1.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/redis/rueidis v1.0.79 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fasthttp v1.78.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/oauth2 v0.38.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
