# sluice on Cloud Run with Firestore (native mode). Nothing is billed at
# rest but storage: Cloud Run scales to zero and Firestore bills by
# operation. Wake-ups go through Firestore snapshot listeners (the store's
# default), so no other service is needed.

locals {
  secret_keys  = "${var.name}-access-keys"
  secret_token = "${var.name}-maintenance-token"
  sa_member    = "serviceAccount:${google_service_account.sluice.email}"

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

  store = var.database == "(default)" ? "firestore://${var.project_id}" : "firestore://${var.project_id}/${var.database}"
}

resource "google_service_account" "sluice" {
  project      = var.project_id
  account_id   = var.name
  display_name = "sluice (${var.name})"
  description  = "Runs the sluice service: document reader and writer of one Firestore database, reader of its own secrets."
}

resource "google_firestore_database" "this" {
  project                 = var.project_id
  name                    = var.database
  location_id             = var.database_location
  type                    = "FIRESTORE_NATIVE"
  delete_protection_state = var.database_deletion_protection ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  deletion_policy         = var.database_deletion_protection ? "ABANDON" : "DELETE"
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
  member  = local.sa_member

  condition {
    title       = "only-${var.database}"
    description = "The sluice Firestore database only."
    expression  = "resource.name == \"projects/${var.project_id}/databases/${var.database}\""
  }
}

module "secrets" {
  source = "../gcp-secrets"

  project_id = var.project_id
  accessor   = local.sa_member
  labels     = { app = "sluice", deployment = var.name }
  secrets = {
    (local.secret_keys)  = var.access_keys
    (local.secret_token) = var.maintenance_token
  }
}

module "service" {
  source = "../gcp-cloudrun-service"

  project_id            = var.project_id
  region                = var.region
  name                  = var.name
  image                 = var.image
  service_account_email = google_service_account.sluice.email
  min_instances         = 0
  max_instances         = var.max_instances
  concurrency           = var.concurrency

  env = merge(var.extra_env, {
    SLUICE_STORE  = var.ttl ? "${local.store}?ttl=true" : local.store
    SLUICE_REGION = var.sqs_region
  })
  secret_env = {
    SLUICE_ACCESS_KEYS       = module.secrets.secrets[local.secret_keys]
    SLUICE_MAINTENANCE_TOKEN = module.secrets.secrets[local.secret_token]
  }

  # The store's queries fail until their indexes exist, and a revision
  # must not start before it may read its secrets and the database.
  depends_on = [module.secrets, google_project_iam_member.datastore_user, google_firestore_index.declared, google_firestore_field.declared]
}

module "maintenance" {
  source = "../gcp-maintenance-schedule"

  project_id   = var.project_id
  region       = var.region
  name         = "${var.name}-maintain"
  endpoint_url = module.service.uri
  token        = var.maintenance_token
  schedule     = var.maintenance_schedule
}
