# One secret per entry, readable by one service account and nobody else
# this module knows of: the grant is on the secret, not the project.

locals {
  # The IDs are not secret, the values are: for_each may only see the IDs.
  ids = toset(nonsensitive(keys(var.secrets)))
}

resource "google_secret_manager_secret" "this" {
  for_each = local.ids

  project   = var.project_id
  secret_id = each.key
  labels    = var.labels

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_version" "this" {
  for_each = local.ids

  secret      = google_secret_manager_secret.this[each.key].id
  secret_data = var.secrets[each.key]
}

resource "google_secret_manager_secret_iam_member" "accessor" {
  for_each = local.ids

  project   = var.project_id
  secret_id = google_secret_manager_secret.this[each.key].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = var.accessor
}
