// Package benchpb holds generated Go types for the transcoding benchmarks, so that they can
// compare plans with protojson on generated code. Regenerate with `go generate` in this
// directory (protoc on PATH, protoc-gen-go v1.36.12 in .tmp/bin: `make` installs neither;
// `apt-get install protobuf-compiler` and
// `GOBIN=$PWD/.tmp/bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12`).
package benchpb

//go:generate protoc --plugin=protoc-gen-go=../../../../.tmp/bin/protoc-gen-go --go_out=. --go_opt=paths=source_relative bench.proto
