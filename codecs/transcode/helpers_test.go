package transcode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/gatehouse-dev/gatehouse/codecs/transcode"
)

// The test schema, compiled once from testdata/*.proto with protocompile.
var (
	schemaOnce  sync.Once
	schemaFiles *protoregistry.Files
	schemaTypes *dynamicpb.Types
	schemaErr   error
)

func loadSchema() {
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(
		&protocompile.SourceResolver{ImportPaths: []string{"testdata"}})}
	fds, err := c.Compile(context.Background(), "transcode_test.proto", "transcode_test2.proto", "transcode_test3.proto")
	if err != nil {
		schemaErr = err
		return
	}
	files := new(protoregistry.Files)
	for _, path := range []string{
		"google/protobuf/any.proto", "google/protobuf/duration.proto", "google/protobuf/empty.proto",
		"google/protobuf/field_mask.proto", "google/protobuf/struct.proto",
		"google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto",
	} {
		fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err == nil {
			err = files.RegisterFile(fd)
		}
		if err != nil {
			schemaErr = err
			return
		}
	}
	for _, fd := range fds {
		if err := files.RegisterFile(fd); err != nil {
			schemaErr = err
			return
		}
	}
	schemaFiles, schemaTypes = files, dynamicpb.NewTypes(files)
}

// desc returns the descriptor of the test message named name (without package for the
// proto3 file, "transcode.test2.X" spelled out for the proto2 one).
func desc(tb testing.TB, name string) protoreflect.MessageDescriptor {
	tb.Helper()
	schemaOnce.Do(loadSchema)
	if schemaErr != nil {
		tb.Fatalf("compiling the test schema: %v", schemaErr)
	}
	full := protoreflect.FullName(name)
	if !strings.ContainsRune(name, '.') {
		full = "transcode.test." + full
	}
	d, err := schemaFiles.FindDescriptorByName(full)
	if err != nil {
		tb.Fatalf("finding %s: %v", full, err)
	}
	return d.(protoreflect.MessageDescriptor)
}

// plans caches the plans of the test messages per option set.
var plans sync.Map // planKey → *transcode.Plan

type planKey struct {
	name    protoreflect.FullName
	discard bool
	emit    bool
}

func plan(tb testing.TB, md protoreflect.MessageDescriptor, discard, emit bool) *transcode.Plan {
	tb.Helper()
	key := planKey{md.FullName(), discard, emit}
	if p, ok := plans.Load(key); ok {
		return p.(*transcode.Plan)
	}
	p, err := transcode.Compile(md, transcode.Options{DiscardUnknown: discard, EmitUnpopulated: emit, Resolver: schemaTypes})
	if err != nil {
		tb.Fatalf("Compile(%s): %v", md.FullName(), err)
	}
	plans.Store(key, p)
	return p
}

// encodeDiff transcodes doc with EncodeJSON and with protojson into a dynamic message,
// and describes how the results differ, or returns "".
func encodeDiff(tb testing.TB, md protoreflect.MessageDescriptor, discard bool, doc []byte) string {
	tb.Helper()
	want := dynamicpb.NewMessage(md)
	werr := protojson.UnmarshalOptions{DiscardUnknown: discard, Resolver: schemaTypes}.Unmarshal(doc, want)
	wire, gerr := plan(tb, md, discard, false).EncodeJSON(nil, doc)
	if gerr != nil {
		if _, ok := errors.AsType[*transcode.PathError](gerr); !ok {
			return fmt.Sprintf("error %v is not a *PathError", gerr)
		}
	}
	switch {
	case werr != nil && gerr != nil:
		return ""
	case werr != nil:
		return fmt.Sprintf("protojson refuses (%v), EncodeJSON accepts", werr)
	case gerr != nil:
		return fmt.Sprintf("protojson accepts, EncodeJSON refuses: %v", gerr)
	}
	got := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{Resolver: schemaTypes, RecursionLimit: 1 << 20}).Unmarshal(wire, got); err != nil {
		return fmt.Sprintf("proto.Unmarshal of EncodeJSON's bytes %x: %v", wire[:min(len(wire), 64)], err)
	}
	if !proto.Equal(got, want) {
		return fmt.Sprintf("messages differ:\n got %v\nwant %v", formatMsg(got), formatMsg(want))
	}
	return ""
}

func formatMsg(m proto.Message) string {
	b, err := protojson.MarshalOptions{Resolver: schemaTypes, AllowPartial: true}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("<%v> %v", err, m)
	}
	return string(b)
}

// decodeDiff transcodes wire with DecodeWire and with proto.Unmarshal into a dynamic
// message then protojson.Marshal, and describes how the results differ, or returns "".
func decodeDiff(tb testing.TB, md protoreflect.MessageDescriptor, emit bool, wire []byte) string {
	tb.Helper()
	got, gerr := plan(tb, md, false, emit).DecodeWire(nil, wire)
	m := dynamicpb.NewMessage(md)
	werr, panicked := unmarshalNoPanic(wire, m)
	if panicked {
		// proto.Unmarshal of a dynamic message panics on a map entry whose key occurs
		// once with the right wire type and again with a wrong one (protobuf-go's
		// unmarshalMap keeps the invalid value); there is nothing to compare with.
		return ""
	}
	var want []byte
	if werr == nil {
		want, werr = protojson.MarshalOptions{Resolver: schemaTypes, EmitUnpopulated: emit}.Marshal(m)
	}
	switch {
	case werr != nil && gerr != nil:
		return ""
	case werr != nil:
		return fmt.Sprintf("protojson refuses (%v), DecodeWire writes %s", werr, got)
	case gerr != nil:
		return fmt.Sprintf("protojson writes %s, DecodeWire refuses: %v", want, gerr)
	}
	return jsonDiff(got, want)
}

// jsonDiff compares two JSON documents by value, numbers by their text, and refuses
// duplicate member names; it returns "" when they are equal.
func jsonDiff(got, want []byte) string {
	g, err := strictJSON(got)
	if err != nil {
		return fmt.Sprintf("DecodeWire wrote invalid JSON %s: %v", got, err)
	}
	w, err := strictJSON(want)
	if err != nil {
		return fmt.Sprintf("protojson wrote invalid JSON %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		return fmt.Sprintf("JSON differs:\n got %s\nwant %s", got, want)
	}
	return ""
}

// strictJSON decodes one JSON value, keeping numbers as text and refusing duplicate names.
func strictJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := strictValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

func strictValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			name := k.(string)
			if _, dup := m[name]; dup {
				return nil, fmt.Errorf("duplicate member %q", name)
			}
			if m[name], err = strictValue(dec); err != nil {
				return nil, err
			}
		}
		_, err = dec.Token()
		return m, err
	case json.Delim('['):
		l := []any{}
		for dec.More() {
			v, err := strictValue(dec)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		_, err = dec.Token()
		return l, err
	}
	return tok, nil
}

// mustWire builds wire bytes for md from its protojson form.
func mustWire(tb testing.TB, md protoreflect.MessageDescriptor, doc string) []byte {
	tb.Helper()
	m := dynamicpb.NewMessage(md)
	if err := (protojson.UnmarshalOptions{Resolver: schemaTypes}).Unmarshal([]byte(doc), m); err != nil {
		tb.Fatalf("protojson.Unmarshal(%s): %v", doc, err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		tb.Fatalf("proto.Marshal: %v", err)
	}
	return b
}

// unmarshalNoPanic runs proto.Unmarshal, reporting a panic instead of propagating it.
func unmarshalNoPanic(wire []byte, m proto.Message) (err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return proto.UnmarshalOptions{Resolver: schemaTypes}.Unmarshal(wire, m), false
}
