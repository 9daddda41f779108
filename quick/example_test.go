package quick_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (SendEmail) Kind() string { return "send_email" }

// Enqueue a job in the same transaction as your own write: both commit, or
// neither does.
func ExampleQueue_InsertTx() {
	ctx := context.Background()
	db := memkv.Open(memkv.Options{}) // or fdbkv.Open(clusterFile) with -tags fdb
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		panic(err)
	}
	id := quick.NewID(time.Now()) // once, outside the retry loop
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("users/42"), []byte(`{"email":"ada@example.com"}`))
		_, err := q.InsertTx(tr, SendEmail{To: "ada@example.com", Subject: "Welcome"}, &quick.InsertOpts{ID: id})
		return err
	})
	if err != nil {
		panic(err)
	}
	res, _ := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "send_email", Holder: "example"})
	args, _ := quick.DecodeArgs[SendEmail](res.Jobs[0].Payload)
	fmt.Println(res.Jobs[0].ID == id, args.To)
	// Output: true ada@example.com
}
