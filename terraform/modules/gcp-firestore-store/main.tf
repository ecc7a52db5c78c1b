# A Firestore database (native mode) ready for sluice's Firestore store:
# the composite indexes, single-field exemptions and TTL policies the
# store declares, and document access for one service account.

locals {
  # The store's own declaration of what its queries need, in the Firebase
  # CLI's format, read as it is so the two never drift apart.
  declared = jsondecode(file("${path.module}/../../../stores/firestore/firestore.indexes.json"))
  indexes = {
    for ix in local.declared.indexes :
    "${ix.collectionGroup}:${join(",", [for f in ix.fields : "${f.fieldPath}:${lookup(f, "order", lookup(f, "arrayConfig", ""))}"])}" => ix
  }
  # Field overrides: each exempts its field from single-field indexing
  # (an empty index list); some also carry a TTL policy.
  fields = { for f in local.declared.fieldOverrides : "${f.collectionGroup}.${f.fieldPath}" => f }

  base = var.database == "(default)" ? "firestore://${var.project_id}" : "firestore://${var.project_id}/${var.database}"
}

resource "google_firestore_database" "this" {
  project                 = var.project_id
  name                    = var.database
  location_id             = var.location
  type                    = "FIRESTORE_NATIVE"
  delete_protection_state = var.deletion_protection ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  deletion_policy         = var.deletion_protection ? "ABANDON" : "DELETE"
}

resource "google_firestore_index" "declared" {
  for_each = local.indexes

  project     = var.project_id
  database    = google_firestore_database.this.name
  collection  = each.value.collectionGroup
  query_scope = each.value.queryScope

  dynamic "fields" {
    for_each = each.value.fields
    content {
      field_path   = fields.value.fieldPath
      order        = lookup(fields.value, "order", null)
      array_config = lookup(fields.value, "arrayConfig", null)
    }
  }
}

resource "google_firestore_field" "declared" {
  for_each = local.fields

  project    = var.project_id
  database   = google_firestore_database.this.name
  collection = each.value.collectionGroup
  field      = each.value.fieldPath

  # No single-field indexes (the file lists none for these fields).
  index_config {}

  dynamic "ttl_config" {
    for_each = var.ttl && lookup(each.value, "ttl", false) ? [1] : []
    content {}
  }
}

# Documents of this database only.
resource "google_project_iam_member" "datastore_user" {
  project = var.project_id
  role    = "roles/datastore.user"
  member  = var.member

  condition {
    title       = "only-${var.database}"
    description = "The sluice Firestore database only."
    expression  = "resource.name == \"projects/${var.project_id}/databases/${var.database}\""
  }
}
