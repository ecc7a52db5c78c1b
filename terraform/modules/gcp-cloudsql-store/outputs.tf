output "store_url" {
  description = "SLUICE_STORE: the socket URL, or the private-IP URL with private_network. Holds the password: keep it in a secret."
  value       = local.private ? local.private_url : local.socket_url
  sensitive   = true
}

output "connection_name" {
  description = "The instance's connection name (PROJECT:REGION:INSTANCE), for the Cloud SQL connection of Cloud Run, the Auth Proxy or sluice maintain as a job."
  value       = google_sql_database_instance.this.connection_name
}

output "ready" {
  description = "For depends_on: the database, the user and the client grant exist."
  value       = concat([google_sql_database.sluice.id, google_sql_user.sluice.id], [for g in google_project_iam_member.cloudsql_client : g.id])
}

output "config" {
  description = "What the instance is planned with, for inspection and the tests; holds no secret."
  value = {
    max_connections       = google_sql_database_instance.this.settings[0].database_flags[0].value
    connector_enforcement = google_sql_database_instance.this.settings[0].connector_enforcement
    public_ip             = google_sql_database_instance.this.settings[0].ip_configuration[0].ipv4_enabled
    authorized_networks   = length(google_sql_database_instance.this.settings[0].ip_configuration[0].authorized_networks)
    deletion_protection   = google_sql_database_instance.this.deletion_protection
    client_grant = local.private ? null : {
      role      = google_project_iam_member.cloudsql_client[0].role
      member    = google_project_iam_member.cloudsql_client[0].member
      condition = google_project_iam_member.cloudsql_client[0].condition[0].expression
    }
  }
}
