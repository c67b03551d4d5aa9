package lock

import (
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// KVWritePrefix is what the subject of a write to a key of bucket starts
// with: "$KV.<bucket>." on the account's own JetStream, and that behind the
// JetStream API prefix ("$JS.<domain>.API.$KV.<bucket>.") when js reaches
// JetStream in another domain or under another prefix, such as the hub of a
// leaf node: a plain "$KV..." write from a leaf with its own JetStream
// would never reach the hub's stream. nats.go's KeyValue.Put routes writes
// the same way. The message is stored under "$KV.<bucket>.<key>" either way,
// which is what reads and watches filter on.
func KVWritePrefix(js jetstream.JetStream, bucket string) string {
	o := js.Options()
	api := ""
	switch {
	case o.Domain != "":
		api = "$JS." + o.Domain + ".API."
	case o.APIPrefix != "" && strings.TrimSuffix(o.APIPrefix, ".")+"." != jetstream.DefaultAPIPrefix:
		api = strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return api + "$KV." + bucket + "."
}
