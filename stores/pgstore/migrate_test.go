package pgstore

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// landedMigrations are the SHA-256 digests of the migrations on main.
// Databases out there have applied them, and migrate never re-applies a
// version, so a landed migration must not change: a schema change is a new
// file. Add a new file's digest here when it lands.
var landedMigrations = map[int]string{
	1:  "00a1bfa333a681caaa3b0f62c5df7300c46ebe67a1dd3b2bc7862d28f1139361",
	2:  "fcfd1b5280ece00954961ced03e433842430128e60dd5e2f5412b71a4fe7529b",
	3:  "90f36827b00d6381ef2bf9bcc8484015e8c7bf628f43826e0c2757fb169f4b91",
	4:  "b68c09c41ebc756b086fc761ada239dddaaed53c758b3908ab87e46d73f3078a",
	5:  "64f711ad49304aa3290c4d781b951e13e4ed3b3cd2ec8f6fda9991779beed86e",
	6:  "dc6becb6a41f918988168f631be0af2d28f22444e0bf375e1adfcc1c234e77b0",
	7:  "b5989db8162d5a09649cc216e908b2370ea42c0294479dbfe1a580847eaa3340",
	8:  "b014af7f8408b513ac3728216f1fda58de0881bf3bdc53305f99ab83191d36dc",
	9:  "a91f568c6470bed6a7a61718c40b89b499a0f7f82c7c481de68e914351f2a43a",
	10: "7f7ade50a0c679f202e20010a4f26f9b43a2142ba5301a0d2923b0c7a986bd9e",
	11: "4791d3cebc7c6021c7face3ec7a50c836cbc3ab712118e11cbfe5dae1ad0904d",
	12: "80a46e3638b60c8708dbdd662c7329099918c87156a1f672b9ca64119f88add0",
	13: "dbf9c432d75db150037146d7fca486c5ac5d2aae00b5f00faf81bd153bbe41f8",
	14: "cf2d89d24155af657507e64dea7b8ce64f7105d683b7029c653513922b5cda9c",
	15: "0ff8999b19a509a295aec13ece29e12a579f1a5f93add3a331c3272d410a907c",
	16: "d43fcb858eb23880a0fb87e4d1af19d32713895e68330311d51fa3eee22870c2",
	17: "a1691130ef8a1aaa41beb60ebd9bfaae709f79a7c7ac709e487d3d81e42095d4",
	18: "779ec5aef191ac901ea13295e0a71e147b8e6e08b5316898f36a8317a9ce8a9f",
	19: "46918c0eeff1c426b0ce328e322239b6a002c0101e4c61599290375dce1f863f",
	20: "0b115959b6c037ab64cf4717f3ad929d0458956f4b962af2d1e9ec6c02e71319",
	21: "61970446950e0f57e106591b6ffd0e3b3224de214c602b78041d452cc8cbc8b0",
	22: "25342f2e2dd1bde34b3733b809baee108ae5993a6066a720771197786cba496f",
	23: "1545aa9c6f64ffa0b2771432009eefa184208906edfb32370426bd4ae4dd805f",
	24: "505ce8170f790a88db47eef475d8404d3ce195aeb1e0f5eaeff04a45a760e622",
}

func TestMigrationsAppendOnly(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		sum := sha256.Sum256([]byte(m.sql))
		got := hex.EncodeToString(sum[:])
		want, ok := landedMigrations[m.version]
		switch {
		case !ok:
			t.Errorf("migration %s (sha256 %s) is not in landedMigrations: add it there when it lands", m.name, got)
		case got != want:
			t.Errorf("migration %s changed (sha256 %s, landed as %s): landed migrations are append-only, put the change in a new file", m.name, got, want)
		}
	}
	if len(ms) != len(landedMigrations) {
		t.Errorf("%d migration files, %d landed digests: a landed migration is missing", len(ms), len(landedMigrations))
	}
}
