package grpcbackend

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/jhump/protoreflect/grpcreflect"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// loadDescriptors reads a backend's descriptors from the one source its config names.
func loadDescriptors(ctx context.Context, cfg DescriptorsConfig, conn grpc.ClientConnInterface) (*protoregistry.Files, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	switch {
	case cfg.File != "":
		return fromDescriptorSet(cfg.File)
	case cfg.Protos != nil:
		return fromProtos(ctx, *cfg.Protos)
	default:
		return fromReflection(ctx, conn)
	}
}

// fromDescriptorSet reads a binary FileDescriptorSet.
func fromDescriptorSet(path string) (*protoregistry.Files, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading descriptor set: %w", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("decoding descriptor set %s: %w", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("descriptor set %s: %w (was it built with its imports included?)", path, err)
	}
	return files, nil
}

// fromProtos compiles .proto sources; the well-known types are always importable. Source
// information is kept, so that comments describe the methods and fields in their JSON
// Schemas (MessageSchema).
func fromProtos(ctx context.Context, cfg ProtosConfig) (*protoregistry.Files, error) {
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: cfg.ImportPaths}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(ctx, cfg.Files...)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", strings.Join(cfg.Files, ", "), err)
	}
	files := new(protoregistry.Files)
	for _, fd := range compiled {
		if err := register(files, fd); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// fromReflection asks the backend for every service it serves and the files defining them.
func fromReflection(ctx context.Context, conn grpc.ClientConnInterface) (*protoregistry.Files, error) {
	client := grpcreflect.NewClientAuto(ctx, conn)
	defer client.Reset()
	services, err := client.ListServices()
	if err != nil {
		return nil, fmt.Errorf("server reflection: %w", err)
	}
	files := new(protoregistry.Files)
	for _, svc := range services {
		if strings.HasPrefix(svc, "grpc.reflection.") {
			continue
		}
		fd, err := client.FileContainingSymbol(svc)
		if err != nil {
			return nil, fmt.Errorf("server reflection of %s: %w", svc, err)
		}
		if err := register(files, fd.UnwrapFile()); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// register adds fd and, first, everything it imports.
func register(files *protoregistry.Files, fd protoreflect.FileDescriptor) error {
	if _, err := files.FindFileByPath(fd.Path()); err == nil {
		return nil
	}
	imports := fd.Imports()
	for i := range imports.Len() {
		if err := register(files, imports.Get(i).FileDescriptor); err != nil {
			return err
		}
	}
	if err := files.RegisterFile(fd); err != nil {
		return fmt.Errorf("registering %s: %w", fd.Path(), err)
	}
	return nil
}

// findMethod resolves "pkg.Service/Method" in files.
func findMethod(files *protoregistry.Files, rpc string) (protoreflect.MethodDescriptor, error) {
	svcName, name, err := splitRPC(rpc)
	if err != nil {
		return nil, err
	}
	svc, err := findService(files, svcName)
	if err != nil {
		return nil, err
	}
	md := svc.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("service %s has no method %s", svcName, name)
	}
	return md, nil
}

func findService(files *protoregistry.Files, name string) (protoreflect.ServiceDescriptor, error) {
	d, err := files.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		return nil, fmt.Errorf("service %s not found in the backend's descriptors", name)
	}
	svc, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service", name)
	}
	return svc, nil
}
