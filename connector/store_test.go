package connector

import (
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// TestStoreValuesAreCopies: no value a transaction hands out points into
// bbolt's memory map, which is unmapped and mapped again elsewhere when
// the file grows; decoded records keep slices of their input, and they
// outlive the transaction.
func TestStoreValuesAreCopies(t *testing.T) {
	st, err := openStateStore(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Update(func(tx stateTx) error {
		for i := range 100 {
			if err := tx.Put(bRecords, "k"+strconv.Itoa(i), map[string]string{"v": "value " + strconv.Itoa(i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Fold the state log into state.db, so the values are read from it.
	ws := st.(*walStore)
	ws.mu.Lock()
	err = ws.fold()
	ws.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	start := ws.db.Info().Data
	inMap := func(b []byte) bool {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return p >= start && p < start+1<<30
	}
	var kept []byte
	if err := st.View(func(tx stateTx) error {
		return tx.Scan(bRecords, "", func(key string, raw []byte) error {
			if inMap(raw) {
				t.Errorf("Scan: the value of %s is in the memory map", key)
				return errStop
			}
			kept = raw
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	var v struct {
		V jsontext.Value `json:"v"`
	}
	if err := st.View(func(tx stateTx) error {
		_, err := tx.Get(bRecords, "k1", &v)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if inMap(v.V) {
		t.Error("Get: a decoded value points into the memory map")
	}
	if string(kept) != `{"v":"value 99"}` {
		t.Errorf("kept value %s", kept)
	}
}
