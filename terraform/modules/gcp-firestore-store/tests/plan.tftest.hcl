variables {
  project_id = "sluice-test"
  location   = "eur3"
  member     = "serviceAccount:sluice@sluice-test.iam.gserviceaccount.com"
}

run "indexes_and_ttl_policies_follow_the_store" {
  command = plan

  # The store declares 20 composite indexes and 16 field overrides
  # (stores/firestore/firestore.indexes.json); two of them are TTL fields.
  assert {
    condition     = length(google_firestore_index.declared) == 20 && length(google_firestore_field.declared) == 16
    error_message = "Every composite index and field override the store declares must be deployed."
  }
  assert {
    condition     = [for f in google_firestore_index.declared["queues:live:ASCENDING,name:ASCENDING"].fields : f.field_path] == ["live", "name"]
    error_message = "An index keeps its fields in the declared order."
  }
  assert {
    condition     = sort([for k, f in google_firestore_field.declared : k if length(f.ttl_config) > 0]) == tolist(["attempts.exp", "dedup.exp"])
    error_message = "TTL policies go on exp of dedup and attempts, and nowhere else."
  }
  assert {
    condition     = alltrue([for f in google_firestore_field.declared : length(f.index_config) == 1 && length(f.index_config[0].indexes) == 0])
    error_message = "Each overridden field is exempt from single-field indexing."
  }
  assert {
    condition     = google_firestore_database.this.type == "FIRESTORE_NATIVE" && google_firestore_database.this.location_id == "eur3"
    error_message = "A native-mode database in the location asked for."
  }
  assert {
    condition     = output.store_url == "firestore://sluice-test/sluice?ttl=true"
    error_message = "SLUICE_STORE names the project and database, with ?ttl=true when the TTL policies are deployed."
  }
}

run "without_ttl" {
  command = plan

  variables {
    ttl = false
  }

  assert {
    condition     = alltrue([for f in google_firestore_field.declared : length(f.ttl_config) == 0])
    error_message = "Without ttl no TTL policy is deployed."
  }
  assert {
    condition     = output.store_url == "firestore://sluice-test/sluice"
    error_message = "Without ttl sluice's housekeeping removes expired markers (no ?ttl=true)."
  }
}

run "least_privilege" {
  command = plan

  assert {
    condition     = google_project_iam_member.datastore_user.role == "roles/datastore.user" && google_project_iam_member.datastore_user.member == var.member
    error_message = "Documents are read and written with roles/datastore.user, nothing broader."
  }
  assert {
    condition     = google_project_iam_member.datastore_user.condition[0].expression == "resource.name == \"projects/sluice-test/databases/sluice\""
    error_message = "roles/datastore.user must be limited to the sluice database."
  }
}

run "default_database" {
  command = plan

  variables {
    database = "(default)"
  }

  assert {
    condition     = output.store_url == "firestore://sluice-test?ttl=true"
    error_message = "The (default) database is named by the project alone."
  }
}
