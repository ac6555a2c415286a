module napwake.dev/shared

go 1.26

require github.com/go-logr/logr v1.4.3
