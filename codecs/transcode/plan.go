package transcode

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// recursionLimit is how deeply messages may nest, counted as protojson and proto count it.
const recursionLimit = protowire.DefaultRecursionLimit

// Resolver finds the message type named by a google.protobuf.Any type URL.
// *protoregistry.Types, protoregistry.GlobalTypes and *dynamicpb.Types implement it.
type Resolver interface {
	FindMessageByURL(url string) (protoreflect.MessageType, error)
}

// Options configures a Plan. The zero value is protojson's default behaviour.
type Options struct {
	// DiscardUnknown makes EncodeJSON skip JSON members that name no field and enum
	// names that name no value, as protojson.UnmarshalOptions.DiscardUnknown does;
	// without it they are errors.
	DiscardUnknown bool
	// EmitUnpopulated makes DecodeWire write fields that are not populated, as
	// protojson.MarshalOptions.EmitUnpopulated does: zero values for scalars without
	// presence, null for fields with presence, [] and {} for lists and maps.
	EmitUnpopulated bool
	// StrictNumbers makes EncodeJSON refuse an integer field's value written as a string
	// ("42"), which proto3 JSON (and protojson) accept: only a JSON number is an integer.
	// Floats keep their quoted forms ("NaN", "Infinity", "1.5"); map keys are strings in
	// JSON and stay so.
	StrictNumbers bool
	// Resolver resolves the types held in google.protobuf.Any; nil means
	// protoregistry.GlobalTypes.
	Resolver Resolver
}

// Plan transcodes one message type between proto3 JSON and protobuf wire bytes.
// A Plan is immutable and safe for concurrent use.
type Plan struct {
	root *message
	reg  *registry
	opts Options
}

// Compile builds the plan for md and for every message type md references, cycles
// included. Types inside google.protobuf.Any are compiled when first met.
func Compile(md protoreflect.MessageDescriptor, opts Options) (*Plan, error) {
	return newRegistry().plan(md, opts)
}

// Descriptor returns the descriptor of the message type the plan transcodes.
func (p *Plan) Descriptor() protoreflect.MessageDescriptor { return p.root.desc }

// resolver returns the resolver for Any types.
func (p *Plan) resolver() Resolver {
	if p.opts.Resolver != nil {
		return p.opts.Resolver
	}
	return protoregistry.GlobalTypes
}

// resolveAny returns the compiled message for the type URL url.
func (p *Plan) resolveAny(url string) (*message, error) {
	mt, err := p.resolver().FindMessageByURL(url)
	if err != nil {
		return nil, err
	}
	return p.reg.message(mt.Descriptor())
}

// registry holds the compiled messages of one descriptor set, keyed by descriptor
// identity; it is shared by the plans of one Cache.
type registry struct {
	mu   sync.Mutex
	msgs sync.Map // protoreflect.MessageDescriptor → *message
}

func newRegistry() *registry { return &registry{} }

// plan returns a Plan for md.
func (r *registry) plan(md protoreflect.MessageDescriptor, opts Options) (*Plan, error) {
	m, err := r.message(md)
	if err != nil {
		return nil, err
	}
	return &Plan{root: m, reg: r, opts: opts}, nil
}

// message returns the compiled message for md, compiling it and what it references.
func (r *registry) message(md protoreflect.MessageDescriptor) (*message, error) {
	if m, ok := r.msgs.Load(md); ok {
		return m.(*message), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := compiler{reg: r, done: map[protoreflect.MessageDescriptor]*message{}}
	m, err := c.message(md)
	if err != nil {
		return nil, err
	}
	// Publish only complete messages, so a concurrent reader never sees a partial one.
	for d, cm := range c.done {
		r.msgs.Store(d, cm)
	}
	return m, nil
}

// compiler compiles the messages reachable from one descriptor.
type compiler struct {
	reg  *registry
	done map[protoreflect.MessageDescriptor]*message
}

var errMessageSet = errors.New("transcode: proto1 MessageSet is not supported")

func (c *compiler) message(md protoreflect.MessageDescriptor) (*message, error) {
	if m, ok := c.reg.msgs.Load(md); ok {
		return m.(*message), nil
	}
	if m, ok := c.done[md]; ok {
		return m, nil
	}
	if md.IsMapEntry() {
		return nil, fmt.Errorf("transcode: %s is a map entry", md.FullName())
	}
	if isMessageSet(md) {
		return nil, errMessageSet
	}
	m := &message{desc: md, wkt: wellKnownOf(md)}
	c.done[md] = m
	fds := md.Fields()
	m.fields = make([]field, fds.Len())
	for i := range m.fields {
		if err := c.field(&m.fields[i], fds.Get(i)); err != nil {
			return nil, err
		}
	}
	c.indexes(m)
	return m, nil
}

func isMessageSet(md protoreflect.MessageDescriptor) bool {
	ms, ok := md.(interface{ IsMessageSet() bool })
	return ok && ms.IsMessageSet()
}

// field compiles the field fd into f.
func (c *compiler) field(f *field, fd protoreflect.FieldDescriptor) error {
	f.desc = fd
	f.index = fd.Index()
	f.num = fd.Number()
	f.kind = fd.Kind()
	f.jsonName = fd.JSONName()
	f.textName = fd.TextName()
	f.key = appendName(nil, f.jsonName)
	f.oneof = -1
	f.utf8 = enforceUTF8(fd)
	f.presence = fd.HasPresence()
	if od := fd.ContainingOneof(); od != nil {
		f.inOneof = true
		if !od.IsSynthetic() {
			f.oneof = od.Index()
		}
	}
	f.wt = wireType(f.kind)
	f.tag = protowire.AppendTag(nil, f.num, f.wt)
	switch {
	case fd.IsMap():
		f.card = cardMap
		f.mapKey, f.mapVal = new(field), new(field)
		if err := c.field(f.mapKey, fd.MapKey()); err != nil {
			return err
		}
		if err := c.field(f.mapVal, fd.MapValue()); err != nil {
			return err
		}
	case fd.IsList():
		f.card = cardList
		if fd.IsPacked() {
			f.packed = true
			f.ptag = protowire.AppendTag(nil, f.num, protowire.BytesType)
		}
	}
	if f.card != cardMap && (f.kind == protoreflect.MessageKind || f.kind == protoreflect.GroupKind) {
		m, err := c.message(fd.Message())
		if err != nil {
			return err
		}
		f.msg = m
		f.nullOK = fd.Message().FullName() == "google.protobuf.Value"
	}
	if f.kind == protoreflect.EnumKind {
		f.enum = compileEnum(fd.Enum())
		f.nullOK = f.enum.null
	}
	if f.card == cardMap {
		f.nullOK = false // protojson skips null for a map field whatever its values
	}
	f.zero = zeroJSON(f)
	return nil
}

// indexes builds the lookup tables of m once its fields are compiled.
func (c *compiler) indexes(m *message) {
	maxNum := protowire.Number(0)
	for i := range m.fields {
		maxNum = max(maxNum, m.fields[i].num)
	}
	if maxNum <= denseNumbers {
		m.byNum = make([]int32, maxNum+1)
		for i := range m.fields {
			m.byNum[m.fields[i].num] = int32(i + 1)
		}
	} else {
		m.sparse = make(map[protowire.Number]int32, len(m.fields))
		for i := range m.fields {
			m.sparse[m.fields[i].num] = int32(i)
		}
	}
	names := make([]string, 0, 2*len(m.fields))
	vals := make([]int32, 0, 2*len(m.fields))
	// protojson tries the JSON name first, then the proto name.
	for i := range m.fields {
		names, vals = append(names, m.fields[i].jsonName), append(vals, int32(i))
	}
	for i := range m.fields {
		if !slices.Contains(names, m.fields[i].textName) {
			names, vals = append(names, m.fields[i].textName), append(vals, int32(i))
		}
	}
	m.names = newNameTable(names, vals)
	m.byNumber = make([]int32, len(m.fields))
	for i := range m.byNumber {
		m.byNumber[i] = int32(i)
	}
	slices.SortFunc(m.byNumber, func(a, b int32) int { return int(m.fields[a].num) - int(m.fields[b].num) })
	m.canon = canonicalOrder(m)
	m.oneofs = make([]string, 0)
	ods := m.desc.Oneofs()
	for i := range ods.Len() {
		m.oneofs = append(m.oneofs, string(ods.Get(i).Name()))
	}
	m.bits = len(m.fields) + len(m.oneofs)
	// proto.CheckInitialized, which protojson calls, goes by RequiredNumbers.
	req := m.desc.RequiredNumbers()
	for i := range req.Len() {
		if fi := m.fieldByNum(req.Get(i)); fi >= 0 {
			m.fields[fi].required = true
			m.required = append(m.required, off32(fi))
		}
	}
	if len(m.required) > 0 {
		m.bits += len(m.fields)
	}
}

// canonicalOrder returns the field indexes of m in the order deterministic proto.Marshal
// writes a dynamic message: fields outside real oneofs by number, then oneof members by
// oneof declaration and number.
func canonicalOrder(m *message) []int32 {
	order := slices.Clone(m.byNumber)
	slices.SortStableFunc(order, func(a, b int32) int {
		fa, fb := &m.fields[a], &m.fields[b]
		switch {
		case fa.oneof < 0 && fb.oneof >= 0:
			return -1
		case fa.oneof >= 0 && fb.oneof < 0:
			return 1
		case fa.oneof >= 0 && fa.oneof != fb.oneof:
			return fa.oneof - fb.oneof
		}
		return int(fa.num) - int(fb.num)
	})
	rank := make([]int32, len(order))
	for r, i := range order {
		rank[i] = int32(r)
	}
	return rank
}

// enforceUTF8 reports whether proto validates the UTF-8 of string field fd.
func enforceUTF8(fd protoreflect.FieldDescriptor) bool {
	if fd.Syntax() == protoreflect.Editions {
		if e, ok := fd.(interface{ EnforceUTF8() bool }); ok {
			return e.EnforceUTF8()
		}
	}
	return fd.Syntax() == protoreflect.Proto3
}

// wireType returns the wire type of a single value of kind k.
func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	default:
		return protowire.VarintType
	}
}
