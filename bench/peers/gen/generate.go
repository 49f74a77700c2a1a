// Package gen holds the benchmark's generated code: the echo backend's messages, gRPC stubs and
// grpc-gateway handlers (benchecho/v1), and grpc-gateway handlers for the repository's demo
// calculator (calculatorgw/v1, standalone: it imports schemas/gen/calculator/v1). The files are
// checked in so a run needs neither protoc nor the plugins; regenerate them with `go generate`
// (protoc from the protobuf-compiler package, the plugins at the versions below on PATH:
// protoc-gen-go v1.36.12, protoc-gen-go-grpc v1.6.2, protoc-gen-grpc-gateway v2.33.0).
package gen

//go:generate protoc -I ../proto --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --grpc-gateway_out=. --grpc-gateway_opt=paths=source_relative,generate_unbound_methods=true benchecho/v1/echo.proto
//go:generate protoc -I ../../../schemas/proto --grpc-gateway_out=calculatorgw --grpc-gateway_opt=paths=source_relative,generate_unbound_methods=true,standalone=true calculator/v1/calculator.proto
