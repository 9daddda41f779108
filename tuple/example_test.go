package tuple_test

import (
	"fmt"

	"github.com/quickfdb/quickfdb/tuple"
)

func Example() {
	key := tuple.Tuple{"emails", 3, int64(1700000000123)}.Pack()
	fmt.Printf("% x\n", key)

	t, err := tuple.Unpack(key)
	if err != nil {
		panic(err)
	}
	fmt.Println(t)
	// Output:
	// 02 65 6d 61 69 6c 73 00 15 03 1a 01 8b cf e5 68 7b
	// ("emails", 3, 1700000000123)
}

func ExampleSubspace() {
	jobs := tuple.NewSubspace([]byte{0xfe}).Sub("jobs")
	key := jobs.Pack(tuple.Tuple{"emails", 7})

	t, err := jobs.Unpack(key)
	fmt.Println(t, err, jobs.Contains(key))

	begin, end := jobs.Range()
	fmt.Printf("[% x, % x)\n", begin, end)
	// Output:
	// ("emails", 7) <nil> true
	// [fe 02 6a 6f 62 73 00 00, fe 02 6a 6f 62 73 00 ff)
}

func ExampleTuple_PackWithVersionstamp() {
	key, err := tuple.Tuple{"log", tuple.IncompleteVersionstamp(0)}.PackWithVersionstamp(nil)
	fmt.Printf("% x %v\n", key, err)
	// Output:
	// 02 6c 6f 67 00 33 ff ff ff ff ff ff ff ff ff ff 00 00 06 00 00 00 <nil>
}
