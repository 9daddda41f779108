package fdbkv

import "errors"

// APIVersion is the FoundationDB API version Open selects when the process
// has not selected one yet: FDB 7.3's, the binding's header version.
const APIVersion = 730

// MinAPIVersion is the oldest API version the adapter accepts when the
// process selected one before Open: the kv contract relies on behaviour from
// 620 on (timeout and retry limit surviving OnError since 610, the
// transaction size estimate since 620).
const MinAPIVersion = 620

// ErrNotBuilt is returned (wrapped) by Open, OpenDirectory and the From
// functions (and by every operation of FromDatabase's database) when the package
// was compiled without the fdb build tag. Test for it with errors.Is.
var ErrNotBuilt = errors.New("fdbkv: built without FoundationDB support: install the FoundationDB client (libfdb_c 7.3) and build with -tags fdb")
