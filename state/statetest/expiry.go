package statetest

import "time"

// expiryCases cover TTLs, with real time.
var expiryCases = []testCase{
	{"Expires", func(t *kvt) {
		k, kept := t.key(), t.key()
		t.set(k, "v", short)
		written := time.Now() // the entry expires by written+short, however long Set took
		t.set(kept, "v", never)
		sleepUntil(written, short+slack)
		t.wantAbsent(k)
		t.wantValue(kept, "v")
		if t.del(k) {
			t.Errorf("Delete(expired) = true, want false")
		}
	}},
	{"SetReplacesTTL", func(t *kvt) {
		shortened, lengthened := t.key(), t.key()
		t.timed(func(start time.Time) bool {
			t.set(shortened, "a", never)
			t.set(shortened, "b", short)
			t.set(lengthened, "a", long)
			t.set(lengthened, "b", never)
			if !within(start, long/2) {
				return false
			}
			sleepUntil(start, long+slack)
			t.wantAbsent(shortened)
			t.wantValue(lengthened, "b")
			return true
		})
	}},
	{"SetNXAfterExpiry", func(t *kvt) {
		k := t.key()
		if !t.setNX(k, "holder", short) {
			t.Fatalf("SetNX(absent) = false")
		}
		sleepUntil(time.Now(), short+slack)
		if !t.setNX(k, "next", never) {
			t.Errorf("SetNX(expired) = false, want true: an expired lock must be free")
		}
		t.wantValue(k, "next")
	}},
	{"SetNXKeepsTTL", func(t *kvt) {
		t.timed(func(start time.Time) bool {
			k := t.key()
			t.set(k, "v", long)
			written := time.Now()
			won := t.setNX(k, "w", never)
			if !within(start, long/2) {
				return false
			}
			if won {
				t.Errorf("SetNX(present) = true, want false")
			}
			sleepUntil(written, long+slack)
			t.wantAbsent(k)
			return true
		})
	}},
	{"CompareAndSwapSetsTTL", func(t *kvt) {
		shortened, lengthened := t.key(), t.key()
		t.timed(func(start time.Time) bool {
			t.set(shortened, "a", never)
			t.set(lengthened, "a", long)
			if !t.cas(shortened, []byte("a"), []byte("b"), short) || !t.cas(lengthened, []byte("a"), []byte("b"), never) {
				if within(start, long/2) {
					t.Errorf("CompareAndSwap(matching) = false, want true")
					return true
				}
				return false
			}
			if !within(start, long/2) {
				return false
			}
			sleepUntil(start, long+slack)
			t.wantAbsent(shortened)
			t.wantValue(lengthened, "b")
			return true
		})
	}},
	{"CompareAndSwapExpired", func(t *kvt) {
		k := t.key()
		t.set(k, "old", short)
		sleepUntil(time.Now(), short+slack)
		if t.cas(k, []byte("old"), []byte("new"), never) {
			t.Errorf("CompareAndSwap(expired, old value) = true, want false: an expired entry is absent")
		}
		if !t.cas(k, nil, []byte("new"), never) {
			t.Errorf("CompareAndSwap(expired, nil) = false, want true")
		}
		t.wantValue(k, "new")
	}},
}
