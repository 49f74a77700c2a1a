package grpcbackend

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/gatehouse-dev/gatehouse/codecs/transcode"
)

// codec transcodes one RPC's request and response with plans compiled once.
type codec struct {
	in, out *transcode.Plan
	unwrap  string
	// listField is the JSON name of the request's only field when that field is repeated:
	// positional params then fill it (sum [1,2,4] → values: [1,2,4]).
	listField string
}

// codecCache shares compiled plans between the methods of one descriptor set. Types in a
// google.protobuf.Any resolve against the same descriptors.
type codecCache struct {
	opts  transcode.Options
	plans map[protoreflect.FullName]*transcode.Plan
}

func newCodecCache(cfg Config, files *protoregistry.Files) *codecCache {
	return &codecCache{
		opts:  transcode.Options{DiscardUnknown: cfg.DiscardUnknown, StrictNumbers: cfg.StrictNumbers, Resolver: dynamicpb.NewTypes(files)},
		plans: make(map[protoreflect.FullName]*transcode.Plan),
	}
}

func (cc *codecCache) plan(md protoreflect.MessageDescriptor) (*transcode.Plan, error) {
	if p, ok := cc.plans[md.FullName()]; ok {
		return p, nil
	}
	p, err := transcode.Compile(md, cc.opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", md.FullName(), err)
	}
	cc.plans[md.FullName()] = p
	return p, nil
}

func (cc *codecCache) codec(md protoreflect.MethodDescriptor, unwrap string) (*codec, error) {
	in, err := cc.plan(md.Input())
	if err != nil {
		return nil, fmt.Errorf("request %w", err)
	}
	out, err := cc.plan(md.Output())
	if err != nil {
		return nil, fmt.Errorf("response %w", err)
	}
	c := &codec{in: in, out: out}
	if unwrap != "" {
		f := md.Output().Fields().ByName(protoreflect.Name(unwrap))
		if f == nil {
			f = md.Output().Fields().ByJSONName(unwrap)
		}
		if f == nil {
			return nil, fmt.Errorf("unwrap: response %s has no field %q", md.Output().FullName(), unwrap)
		}
		c.unwrap = string(f.Name())
	}
	if fs := md.Input().Fields(); fs.Len() == 1 && fs.Get(0).IsList() {
		c.listField = fs.Get(0).JSONName()
	}
	return c, nil
}

// request appends the wire bytes of params (a JSON object, a JSON array of positional
// fields in field-number order, or nothing for an empty message).
func (c *codec) request(dst, params []byte) ([]byte, error) {
	switch {
	case len(params) == 0:
		return dst, nil
	case params[0] == '[' && c.listField != "":
		wrapped := make([]byte, 0, len(c.listField)+len(params)+5)
		wrapped = append(append(append(append(wrapped, `{"`...), c.listField...), `":`...), params...)
		return c.in.EncodeJSON(dst, append(wrapped, '}'))
	case params[0] == '[':
		return c.in.EncodePositional(dst, params)
	default:
		return c.in.EncodeJSON(dst, params)
	}
}

// response appends the JSON of a response, or of its unwrapped field.
func (c *codec) response(dst, wire []byte) ([]byte, error) {
	if c.unwrap != "" {
		return c.out.DecodeField(dst, wire, c.unwrap)
	}
	return c.out.DecodeWire(dst, wire)
}

// frame is a message already in wire form; rawCodec passes it through gRPC untouched.
type frame struct{ data []byte }

// rawCodec is a gRPC codec for frames: the transcoder has already produced the bytes.
type rawCodec struct{}

var _ encoding.CodecV2 = rawCodec{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.data)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	f.data = data.Materialize()
	return nil
}

// Name is "proto": backends see an ordinary application/grpc+proto call.
func (rawCodec) Name() string { return "proto" }
