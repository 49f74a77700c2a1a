package statetest

// valueCases cover storing, replacing and removing values.
var valueCases = []testCase{
	{"GetAbsent", func(t *kvt) {
		t.wantAbsent(t.key())
	}},
	{"SetGet", func(t *kvt) {
		k := t.key()
		t.set(k, "v1", never)
		t.wantValue(k, "v1")
		t.set(k, "v2", never)
		t.wantValue(k, "v2")
	}},
	{"EmptyAndNilValues", func(t *kvt) {
		empty, nilled := t.key(), t.key()
		t.set(empty, "", never)
		t.wantValue(empty, "")
		if err := t.kv.Set(t.ctx, nilled, nil, never); err != nil {
			t.Fatalf("Set(nil): %v", err)
		}
		t.wantValue(nilled, "")
	}},
	{"EmptyKey", func(t *kvt) {
		// The empty key is valid. All runs against a shared store share it, so the value
		// read back is not checked, and what is written soon expires.
		if err := t.kv.Set(t.ctx, "", []byte("x"), short); err != nil {
			t.Errorf("Set(\"\"): %v", err)
		}
		if _, _, err := t.kv.Get(t.ctx, ""); err != nil {
			t.Errorf("Get(\"\"): %v", err)
		}
	}},
	{"BinaryValues", func(t *kvt) {
		k := t.key()
		v := string([]byte{0, 0xff, '\n', 0x80, 0})
		t.set(k, v, never)
		t.wantValue(k, v)
	}},
	{"Delete", func(t *kvt) {
		k := t.key()
		if t.del(k) {
			t.Errorf("Delete(absent) = true, want false")
		}
		t.set(k, "v", never)
		if !t.del(k) {
			t.Errorf("Delete(present) = false, want true")
		}
		t.wantAbsent(k)
		if t.del(k) {
			t.Errorf("Delete(deleted) = true, want false")
		}
	}},
	{"SetNX", func(t *kvt) {
		k := t.key()
		if !t.setNX(k, "first", never) {
			t.Fatalf("SetNX(absent) = false, want true")
		}
		if t.setNX(k, "second", never) {
			t.Errorf("SetNX(present) = true, want false")
		}
		t.wantValue(k, "first")
		t.del(k)
		if !t.setNX(k, "third", never) {
			t.Errorf("SetNX(deleted) = false, want true")
		}
		t.wantValue(k, "third")
	}},
	{"CompareAndSwap", testCompareAndSwap},
	{"CopiesIn", func(t *kvt) {
		k1, k2, k3 := t.key(), t.key(), t.key()
		buf := []byte("abc")
		if err := t.kv.Set(t.ctx, k1, buf, never); err != nil {
			t.Fatal(err)
		}
		if _, err := t.kv.SetNX(t.ctx, k2, buf, never); err != nil {
			t.Fatal(err)
		}
		if _, err := t.kv.CompareAndSwap(t.ctx, k3, nil, buf, never); err != nil {
			t.Fatal(err)
		}
		copy(buf, "XYZ")
		t.wantValue(k1, "abc")
		t.wantValue(k2, "abc")
		t.wantValue(k3, "abc")
	}},
	{"CopiesOut", func(t *kvt) {
		k := t.key()
		t.set(k, "abc", never)
		got, _, err := t.kv.Get(t.ctx, k)
		if err != nil || len(got) != 3 {
			t.Fatalf("Get = %q, %v", got, err)
		}
		copy(got, "XYZ")
		t.wantValue(k, "abc")
		_ = append(got[:0], "123456789"...) // writes past len into any spare capacity
		t.wantValue(k, "abc")
	}},
}

func testCompareAndSwap(t *kvt) {
	b := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name      string
		initial   *string // nil: absent
		old, repl []byte
		want      bool
		after     *string // nil: absent
	}{
		{"AbsentOldNilCreates", nil, nil, b("new"), true, new("new")},
		{"AbsentOldValueFails", nil, b("x"), b("new"), false, nil},
		{"AbsentOldEmptyFails", nil, b(""), b("new"), false, nil},
		{"PresentOldNilFails", new("cur"), nil, b("new"), false, new("cur")},
		{"PresentMatchSwaps", new("cur"), b("cur"), b("new"), true, new("new")},
		{"PresentMismatchFails", new("cur"), b("other"), b("new"), false, new("cur")},
		{"PresentPrefixFails", new("cur"), b("cu"), b("new"), false, new("cur")},
		{"EmptyMatchesEmpty", new(""), b(""), b("new"), true, new("new")},
		{"EmptyIsNotAbsent", new(""), nil, b("new"), false, new("")},
		{"SwapToEmpty", new("cur"), b("cur"), b(""), true, new("")},
		{"NewNilDeletes", new("cur"), b("cur"), nil, true, nil},
		{"NewNilMismatchKeeps", new("cur"), b("other"), nil, false, new("cur")},
		{"BothNilOnAbsent", nil, nil, nil, true, nil},
		{"BothNilOnPresentFails", new("cur"), nil, nil, false, new("cur")},
	}
	for _, tt := range tests {
		k := t.key()
		if tt.initial != nil {
			t.set(k, *tt.initial, never)
		}
		if got := t.cas(k, tt.old, tt.repl, never); got != tt.want {
			t.Errorf("%s: CompareAndSwap = %v, want %v", tt.name, got, tt.want)
		}
		if tt.after == nil {
			t.wantAbsent(k)
		} else {
			t.wantValue(k, *tt.after)
		}
	}
}
