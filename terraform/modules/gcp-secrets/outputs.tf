output "secrets" {
  description = "Secret ID => {secret, version}: what a Cloud Run secret_key_ref takes (the version is the one written here, so a new value makes a new revision)."
  value = {
    for id in local.ids : id => {
      secret  = google_secret_manager_secret.this[id].secret_id
      version = google_secret_manager_secret_version.this[id].version
    }
  }
}

output "accessor_grants" {
  description = "The accessor grants, for depends_on: a service must not start before it may read its secrets."
  value       = [for id in local.ids : google_secret_manager_secret_iam_member.accessor[id].id]
}
