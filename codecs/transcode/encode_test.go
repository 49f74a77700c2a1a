package transcode_test

import (
	"fmt"
	"strings"
	"testing"
)

// scalarValues are JSON texts tried against every scalar field: the accepted spellings
// of each kind, their edges, and what must be refused.
var scalarValues = []string{
	`0`, `1`, `-1`, `-0`, `1.0`, `1.5`, `1e2`, `1E2`, `1e+2`, `1e-2`, `10e-1`, `0.1e1`, `0.5e1`,
	`100e-2`, `1.50e1`, `1e`, `1e+`, `1E-`, `0e5`, `-0.0`, `0.0e-7`, `1.0e0`, `0.00000000000000000000001e25`,
	`0.1e20`, `1e19`, `1e20`, `1e400`, `-1e400`, `1e-400`, `12345678901234567890123`,
	`2147483647`, `2147483648`, `-2147483648`, `-2147483649`, `4294967295`, `4294967296`,
	`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
	`18446744073709551615`, `18446744073709551616`, `3.4028234663852886e38`, `3.5e38`, `1.7976931348623157e308`,
	`1.401298464324817e-45`, `5e-324`, `0.30000000000000004`, `123456789.123456789`,
	`"0"`, `"1"`, `"-1"`, `"1.0"`, `"1e2"`, `"1.5"`, `" 1"`, `"1 "`, `"+1"`, `"01"`, `"0x10"`, `"1e"`,
	`"9223372036854775807"`, `"18446744073709551615"`, `"-9223372036854775808"`, `"2147483648"`,
	`"NaN"`, `"Infinity"`, `"-Infinity"`, `"nan"`, `"inf"`, `"-inf"`, `"+Infinity"`, `"1\u0030"`,
	`true`, `false`, `null`, `""`, `"abc"`, `"RED"`, `"BLUE"`, `"red"`, `"ALIASED_UNO"`, `[]`, `{}`, `[1]`,
	`"AQID"`, `"AQI"`, `"AQI="`, `"AQ=="`, `"AQ="`, `"-_-_"`, `"_w"`, `"+/+/"`, `"a b"`, `"YQ==\n"`, `"YQ\r\n=="`,
	`"\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud83d\ude00x"`, `"\x"`, `"\u12"`,
	`"a\"b\\c\/d\b\f\n\r\t"`, "\"\x01\"", "\"\xff\"", "\"\xc3\xa9\"", "\"\t\"", `01`, `-`, `.5`, `+1`, `1.`,
	`1.e5`, `NaN`, `Infinity`, `tru`, `truex`, `nulll`, `1x`, `1_0`, `0x10`, `1/`, `1,`,
}

// scalarFields names a field of each kind in Scalars and Optionals.
var scalarFields = []string{
	"fDouble", "fFloat", "fInt32", "fInt64", "fUint32", "fUint64", "fSint32", "fSint64",
	"fFixed32", "fFixed64", "fSfixed32", "fSfixed64", "fBool", "fString", "fBytes", "fEnum", "fAlias",
}

func TestEncodeScalarsDifferential(t *testing.T) {
	scalars, optionals := desc(t, "Scalars"), desc(t, "Optionals")
	for _, discard := range []bool{false, true} {
		for _, f := range scalarFields {
			for _, v := range scalarValues {
				doc := []byte(`{"` + f + `":` + v + `}`)
				if d := encodeDiff(t, scalars, discard, doc); d != "" {
					t.Errorf("Scalars %s (discard=%v): %s", doc, discard, d)
				}
				of := "o" + f[1:]
				if f == "fAlias" {
					continue
				}
				doc = []byte(`{"` + of + `":` + v + `}`)
				if d := encodeDiff(t, optionals, discard, doc); d != "" {
					t.Errorf("Optionals %s (discard=%v): %s", doc, discard, d)
				}
			}
		}
	}
}

func TestEncodeRepeatedDifferential(t *testing.T) {
	md := desc(t, "Repeateds")
	fields := []string{
		"rDouble", "rFloat", "rInt32", "rInt64", "rUint32", "rUint64", "rSint32", "rSint64", "rFixed32",
		"rFixed64", "rSfixed32", "rSfixed64", "rBool", "rString", "rBytes", "rEnum", "rUnpacked", "rUnpackedDouble",
	}
	lists := []string{`[]`, `null`, `[1,2,3]`, `[0]`, `[0,0]`, `[-1,"2",3.0]`, `[true,false]`, `["RED","BLUE",2,"nope"]`,
		`["a","",null]`, `[null]`, `["AQID",""]`, `[1,]`, `[,1]`, `[1 2]`, `1`, `{}`, `[[1]]`, `["NaN",1e300]`,
		`[4294967295,-2147483648]`, `[` + strings.Repeat(`200,`, 100) + `1]`}
	for _, discard := range []bool{false, true} {
		for _, f := range fields {
			for _, l := range lists {
				doc := []byte(`{"` + f + `":` + l + `}`)
				if d := encodeDiff(t, md, discard, doc); d != "" {
					t.Errorf("%s (discard=%v): %s", doc, discard, d)
				}
			}
		}
	}
}

func TestEncodeMapsDifferential(t *testing.T) {
	md := desc(t, "Maps")
	fields := []string{"strStr", "i32", "i64", "u32", "u64", "s32", "s64", "f32", "f64", "sf32", "sf64", "b",
		"msgs", "values", "nulls", "anys", "wrapped"}
	keys := []string{`""`, `"a"`, `"0"`, `"1"`, `"-1"`, `"+1"`, `"01"`, `" 1"`, `"1.0"`, `"1e2"`, `"true"`, `"false"`,
		`"True"`, `"2147483648"`, `"-2147483649"`, `"4294967296"`, `"18446744073709551615"`, `"-9223372036854775808"`,
		`"\u0031"`, `"é"`}
	values := []string{`"x"`, `1`, `true`, `"RED"`, `"nope"`, `null`, `{}`, `{"a":1}`, `"AQID"`, `1.5`, `[1]`,
		`"NULL_VALUE"`, `0`, `{"@type":"type.googleapis.com/transcode.test.Nested","a":1}`, `"NaN"`}
	for _, discard := range []bool{false, true} {
		for _, f := range fields {
			for _, k := range keys {
				for _, v := range values {
					doc := []byte(`{"` + f + `":{` + k + `:` + v + `}}`)
					if d := encodeDiff(t, md, discard, doc); d != "" {
						t.Errorf("%s (discard=%v): %s", doc, discard, d)
					}
				}
			}
			for _, m := range []string{`{}`, `null`, `[]`, `{"1":1,"1":2}`, `{"1":1,"01":2}`, `{"a":1,"b":2,"c":3}`,
				`{"true":"a","false":"b"}`, `{"1":"nope","1":"RED"}`, `{"1":"RED","1":"nope"}`, `{"1":1,}`} {
				doc := []byte(`{"` + f + `":` + m + `}`)
				if d := encodeDiff(t, md, discard, doc); d != "" {
					t.Errorf("%s (discard=%v): %s", doc, discard, d)
				}
			}
		}
	}
	// Many keys: the duplicate check moves to a Go map.
	var b strings.Builder
	b.WriteString(`{"i32":{`)
	for i := range 100 {
		fmt.Fprintf(&b, `"%d":%d,`, i, i)
	}
	b.WriteString(`"5":1}}`)
	if d := encodeDiff(t, md, false, []byte(b.String())); d != "" {
		t.Errorf("many keys: %s", d)
	}
}

// structuralCases are whole documents for Everything.
var structuralCases = []string{
	`{}`, ` { } `, `{"scalars":{}}`, `{"scalars":null}`, `[]`, `null`, `1`, `""`, ``, ` `, `{`, `}`, `{"a"}`,
	`{"scalars":{"fInt32":1}}x`, `{"scalars":{"fInt32":1}} `, `{"scalars":{"fInt32":1},}`, `{,}`, `{"scalars" {}}`,
	`{"nested":{"a":1,"b":"x","child":{"a":2,"child":{"b":"deep"}},"children":[{"a":1},{},{"b":""}]}}`,
	`{"nested":{"a":1,"a":2}}`, `{"nested":{"a":1,"A":2}}`, `{"scalars":{"fInt32":1,"f_int32":2}}`,
	`{"scalars":{"f_int32":1}}`, `{"scalars":{"F_int32":1}}`, `{"customName":"x"}`, `{"json_named":"x"}`,
	`{"jsonNamed":"x"}`, `{"unknown":1}`, `{"unknown":{"a":[1,{"b":null}]}}`, `{"unknown":[}`, `{"unknown":1,"unknown":2}`,
	`{"n\u0065sted":{"\u0061":1}}`, `{"orderHigh":1,"orderLow":2}`, `{"order_high":1,"orderHigh":2}`,
	`{"oneofs":{"oInt":1,"oStr":"x"}}`, `{"oneofs":{"oInt":1,"x":true}}`, `{"oneofs":{"oInt":null,"oStr":"x"}}`,
	`{"oneofs":{"oInt":1,"oStr":null}}`, `{"oneofs":{"oInt":0}}`, `{"oneofs":{"oStr":""}}`, `{"oneofs":{"oMsg":{}}}`,
	`{"oneofs":{"oMsg":null}}`, `{"oneofs":{"oValue":null}}`, `{"oneofs":{"oValue":null,"oInt":1}}`,
	`{"oneofs":{"oNull":null}}`, `{"oneofs":{"oNull":null,"oInt":1}}`, `{"oneofs":{"oNull":"NULL_VALUE"}}`, `{"oneofs":{"oNull":0}}`,
	`{"oneofs":{"oEnum":"nope"}}`, `{"oneofs":{"oEnum":"nope","oInt":1}}`, `{"oneofs":{"oBytes":""}}`, `{"oneofs":{"y":-0}}`,
	`{"oneofs":{"oTs":"1970-01-01T00:00:00Z"}}`, `{"oneofs":{"x":false,"y":1}}`, `{"oneofs":{"plain":0,"oInt":0,"x":false}}`,
	`{"rec":{"self":{"self":{"self":{"depth":3}}},"m":{"a":{"depth":1},"b":{"m":{"c":{}}}},"list":[{"list":[{}]}]}}`,
	`{"optionals":{"oInt32":0,"oString":"","oBool":false,"oEnum":0,"oMsg":{},"oBytes":"","oDouble":-0}}`,
	`{"scalars":{"fDouble":-0,"fFloat":-0.0}}`, `{"scalars":{"fString":"\u0000"}}`,
}

// wktCases are documents for WellKnown.
var wktCases = []string{
	`{"ts":"1970-01-01T00:00:00Z"}`, `{"ts":"2024-02-29T12:34:56.123456789Z"}`, `{"ts":"2023-02-29T00:00:00Z"}`,
	`{"ts":"0001-01-01T00:00:00Z"}`, `{"ts":"9999-12-31T23:59:59.999999999Z"}`, `{"ts":"0000-12-31T23:59:59Z"}`,
	`{"ts":"2024-01-01T00:00:00.1234567890Z"}`, `{"ts":"2024-01-01T00:00:00+01:00"}`, `{"ts":"2024-01-01T00:00:00-23:59"}`,
	`{"ts":"2024-01-01T00:00:00.5+01:00"}`, `{"ts":"2024-01-01t00:00:00Z"}`, `{"ts":"2024-01-01T00:00:00z"}`,
	`{"ts":"2024-01-01T24:00:00Z"}`, `{"ts":"2024-01-01T23:60:00Z"}`, `{"ts":"2024-01-01T23:59:60Z"}`,
	`{"ts":"2024-01-01T00:00:00,5Z"}`, `{"ts":"2024-01-01T00:00:00.Z"}`, `{"ts":"2024-1-01T00:00:00Z"}`,
	`{"ts":"2024-01-01 00:00:00Z"}`, `{"ts":"2024-01-01T00:00:00"}`, `{"ts":1}`, `{"ts":null}`, `{"ts":""}`,
	`{"ts":"10000-01-01T00:00:00Z"}`, `{"ts":"1969-12-31T23:59:59.999Z"}`, `{"ts":"2024-01-01T00:00:00.000Z"}`,
	`{"tss":["1970-01-01T00:00:01Z",null]}`, `{"tss":["1970-01-01T00:00:01Z"]}`,
	`{"dur":"1s"}`, `{"dur":"1.5s"}`, `{"dur":"-1.5s"}`, `{"dur":"+1.5s"}`, `{"dur":".5s"}`, `{"dur":"1.s"}`, `{"dur":"-.5s"}`,
	`{"dur":"0s"}`, `{"dur":"00s"}`, `{"dur":"01s"}`, `{"dur":"1.0000000001s"}`, `{"dur":"1.000000000s"}`,
	`{"dur":"315576000000s"}`, `{"dur":"315576000001s"}`, `{"dur":"-315576000000.999999999s"}`, `{"dur":"1"}`,
	`{"dur":"s"}`, `{"dur":"-s"}`, `{"dur":".s"}`, `{"dur":"1.5S"}`, `{"dur":" 1s"}`, `{"dur":1}`, `{"dur":"9223372036854775808s"}`,
	`{"durs":["1s","-0.000000001s"]}`,
	`{"st":{}}`, `{"st":{"a":1,"b":"x","c":true,"d":null,"e":[1,"2",{"f":[]}],"g":{"h":{}}}}`, `{"st":null}`,
	`{"st":[]}`, `{"st":{"a":1,"a":2}}`, `{"st":{"a":1e400}}`, `{"st":{"a":"NaN"}}`, `{"st":{"a":01}}`,
	`{"val":null}`, `{"val":1}`, `{"val":"x"}`, `{"val":true}`, `{"val":[]}`, `{"val":{}}`, `{"val":[null,[null,{}]]}`,
	`{"val":1e400}`, `{"val":-0}`, `{"val":0}`, `{"val":""}`, `{"val":false}`,
	`{"lv":[]}`, `{"lv":[1,null,"a",{"b":[]}]}`, `{"lv":null}`, `{"lv":{}}`, `{"vals":[null,1]}`, `{"vals":null}`,
	`{"fm":""}`, `{"fm":"a"}`, `{"fm":"fooBar,baz.quxQuux"}`, `{"fm":" a , b "}`, `{"fm":"a,b"}`, `{"fm":" a,b "}`,
	`{"fm":"foo_bar"}`, `{"fm":"a,,b"}`, `{"fm":"a,"}`, `{"fm":"1a"}`, `{"fm":"a.1"}`, `{"fm":"fooBAR"}`, `{"fm":"é"}`, `{"fm":null}`, `{"fm":1}`,
	`{"empty":{}}`, `{"empty":{"a":1}}`, `{"empty":null}`, `{"empty":[]}`,
	`{"wBool":true}`, `{"wBool":false}`, `{"wBool":null}`, `{"wInt32":0}`, `{"wInt32":"5"}`, `{"wInt64":"5"}`, `{"wInt64":5}`,
	`{"wUint32":4294967295}`, `{"wUint64":"18446744073709551615"}`, `{"wFloat":"NaN"}`, `{"wFloat":1.5}`,
	`{"wDouble":-0}`, `{"wString":""}`, `{"wString":"x"}`, `{"wBytes":"AQID"}`, `{"wBytes":""}`, `{"wInt32":{}}`,
	`{"wInt32":{"value":1}}`, `{"wList":[1,2]}`, `{"wList":[null]}`,
	`{"null":null}`, `{"null":"NULL_VALUE"}`, `{"null":0}`, `{"null":1}`, `{"null":"x"}`, `{"nulls":[null,0]}`, `{"nulls":null}`,
	`{"structs":[{},{"a":1}]}`, `{"structs":[null]}`,
	`{"any":{}}`, `{"any":null}`, `{"any":{"@type":"type.googleapis.com/transcode.test.Nested","a":1,"b":"x"}}`,
	`{"any":{"a":1,"@type":"type.googleapis.com/transcode.test.Nested"}}`, `{"any":{"a":1}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Nested"}}`, `{"any":{"@type":""}}`, `{"any":{"@type":1}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Nope"}}`, `{"any":{"@type":"x","@type":"x"}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Nested","@type":"type.googleapis.com/transcode.test.Nested"}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Nested","zzz":1}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Timestamp","value":"1970-01-01T00:00:01Z"}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Timestamp"}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Timestamp","value":"1970-01-01T00:00:01Z","value":"1970-01-01T00:00:01Z"}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Timestamp","value":"1970-01-01T00:00:01Z","x":1}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Empty"}}`, `{"any":{"@type":"type.googleapis.com/google.protobuf.Empty","value":{}}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Struct","value":{"b":1,"a":{"d":2,"c":[3]}}}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Value","value":null}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Int32Value","value":0}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Any","value":{"@type":"type.googleapis.com/transcode.test.Nested","a":5}}}`,
	`{"any":{"@type":"type.googleapis.com/google.protobuf.Any","value":{}}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Maps","i32":{"3":1,"-1":2,"2":3},"strStr":{"b":"1","a":"2","":"3"},"b":{"true":"t","false":"f"},"u64":{"18446744073709551615":1,"1":2},"sf64":{"-5":1,"5":2}}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Oneofs","plain":1,"y":2,"oInt":3}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Repeateds","rInt32":[1,2],"rString":["a"],"rMsg":[{"a":1},{}]}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Everything","wkt":{"any":{"@type":"type.googleapis.com/transcode.test.Nested","a":1}},"orderLow":1,"orderHigh":2,"scalars":{"fString":"x","fInt32":1}}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Optionals","oInt32":0,"oMsg":{}}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Nested","a":1,"a":2}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Nested","a":"x"}}`,
	`{"anys":[{},{"@type":"type.googleapis.com/google.protobuf.Duration","value":"1s"}]}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Scalars","fEnum":"nope","fInt32":1}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Maps","s32":{"1":"nope","2":"RED"}}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Repeateds","rEnum":["nope"]}}`,
	`{"any":{"@type":"type.googleapis.com/transcode.test.Nested","unknown":{"x":[1,2]}}}`,
}

func TestEncodeStructureDifferential(t *testing.T) {
	for _, discard := range []bool{false, true} {
		for _, c := range structuralCases {
			if d := encodeDiff(t, desc(t, "Everything"), discard, []byte(c)); d != "" {
				t.Errorf("Everything %s (discard=%v): %s", c, discard, d)
			}
		}
		for _, c := range wktCases {
			if d := encodeDiff(t, desc(t, "WellKnown"), discard, []byte(c)); d != "" {
				t.Errorf("WellKnown %s (discard=%v): %s", c, discard, d)
			}
		}
	}
}

func TestEncodeOtherMessagesDifferential(t *testing.T) {
	cases := []struct{ msg, doc string }{
		{"Wide", `{"w1":1,"w64":64,"w65":65,"w70":70,"wa":"a"}`},
		{"Wide", `{"w65":1,"w65":2}`},
		{"Wide", `{"wa":"a","wb":"b"}`},
		{"Wide", `{"wa":null,"wb":"b"}`},
		{"Sparse", `{"a":1,"b":"x","c":{"a":2}}`},
		{"Positional", `{"name":"x","count":2,"tags":["a"],"p1":1}`},
		{"transcode.test2.P2", `{}`},
		{"transcode.test2.P2", `{"a":0,"s":"","by":"","e":"CLOSED_ONE","packed":[1,2],"unpacked":[3],"g":{"x":1,"y":"z"},"r":[{"z":1},{}]}`},
		{"transcode.test2.P2", `{"e":5}`},
		{"transcode.test2.P2", `{"e":"nope"}`},
		{"transcode.test2.P2", `{"G":{"x":1}}`},
		{"transcode.test2.P2", `{"child":{"child":{"a":1}},"m":{"k":"v"},"names":["a","b"]}`},
		{"transcode.test2.P2", `{"[transcode.test2.ext]":1}`},
		{"transcode.test2.Req", `{}`},
		{"transcode.test2.Req", `{"id":1}`},
		{"transcode.test2.Req", `{"id":null}`},
		{"transcode.test2.Req", `{"id":1,"child":{}}`},
		{"transcode.test2.Req", `{"id":1,"list":[{"id":2},{}]}`},
		{"google.protobuf.Value", `1`},
		{"google.protobuf.Value", `null`},
		{"google.protobuf.Value", `[{"a":[]}]`},
		{"google.protobuf.Struct", `{"a":1}`},
		{"google.protobuf.Struct", `[]`},
		{"google.protobuf.ListValue", `[1]`},
		{"google.protobuf.Timestamp", `"1970-01-01T00:00:00Z"`},
		{"google.protobuf.Duration", `"1s"`},
		{"google.protobuf.Empty", `{}`},
		{"google.protobuf.Any", `{"@type":"type.googleapis.com/google.protobuf.Value","value":[1]}`},
		{"google.protobuf.Int64Value", `"1"`},
		{"google.protobuf.FieldMask", `"a.b,cD"`},
		{"transcode.test3.Ed", `{"required":1,"explicit":0,"implicit":0,"unchecked":"x","expanded":[1,2],"packed":[3],"delimited":{"required":2,"open":"OPEN_ONE"},"delimitedList":[{"required":3}],"shut":"SHUT_ONE","map":{"k":{"required":4}}}`},
		{"transcode.test3.Ed", `{"required":1,"open":5,"shut":5}`},
		{"transcode.test3.Ed", `{"explicit":1}`},
		{"transcode.test3.Ed", `{"required":1,"delimited":{}}`},
	}
	for _, discard := range []bool{false, true} {
		for _, c := range cases {
			if d := encodeDiff(t, desc(t, c.msg), discard, []byte(c.doc)); d != "" {
				t.Errorf("%s %s (discard=%v): %s", c.msg, c.doc, discard, d)
			}
		}
	}
}

// TestEncodeDepth checks the nesting limit against protojson's.
func TestEncodeDepth(t *testing.T) {
	md := desc(t, "Recursive")
	for _, n := range []int{9998, 9999, 10000, 10001} {
		doc := strings.Repeat(`{"self":`, n-1) + `{}` + strings.Repeat(`}`, n-1)
		if d := encodeDiff(t, md, false, []byte(doc)); d != "" {
			t.Errorf("depth %d: %s", n, d)
		}
	}
	vd := desc(t, "google.protobuf.Value")
	for _, n := range []int{9998, 9999, 10000, 10001} {
		doc := strings.Repeat(`[`, n) + strings.Repeat(`]`, n)
		if d := encodeDiff(t, vd, false, []byte(doc)); d != "" {
			t.Errorf("Value depth %d: %s", n, d)
		}
	}
	for _, n := range []int{9997, 9998, 9999, 10000} {
		doc := `{"unknown":` + strings.Repeat(`[`, n) + strings.Repeat(`]`, n) + `}`
		if d := encodeDiff(t, md, true, []byte(doc)); d != "" {
			t.Errorf("skipped depth %d: %s", n, d)
		}
	}
}
