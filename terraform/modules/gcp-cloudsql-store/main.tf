# A Cloud SQL for PostgreSQL instance ready for sluice's PostgreSQL store:
# the database and user, max_connections sized for every instance's pool
# and LISTEN connection, and the store URL (which holds the password, so
# it is a secret of the caller's).
#
# Two ways in:
#   - private_network null: the Cloud SQL connection of Cloud Run (the Auth
#     Proxy's unix socket under /cloudsql). No VPC to pay for while idle;
#     the proxy encrypts and authorises by IAM (roles/cloudsql.client on
#     this instance only); the public IP accepts only the connectors.
#   - private_network set: a private IP on that VPC network only, for a
#     front that cannot mount the socket (a Cloud Function); the password
#     and TLS (sslmode=require) guard it, no IAM grant is needed.

locals {
  private       = var.private_network != null
  database      = "sluice"
  db_user       = "sluice"
  instance_path = "projects/${var.project_id}/instances/${google_sql_database_instance.this.name}"
  # Every instance's pool and LISTEN connection, plus room for Cloud SQL's
  # own and an operator's.
  max_connections = var.max_instances * (var.pool_max_conns + 1) + 20
  # The password as a URL's userinfo: urlencode writes a space as "+",
  # which a URL's userinfo keeps as a plus (pgx reads it so), hence %20.
  db_password_in_url = replace(urlencode(var.db_password), "+", "%20")
  # pgx reads the socket directory from host=; the proxy encrypts, so the
  # socket itself needs no TLS.
  socket_url = format("postgres://%s:%s@/%s?host=/cloudsql/%s&sslmode=disable&pool_max_conns=%d",
    local.db_user, local.db_password_in_url, local.database,
  google_sql_database_instance.this.connection_name, var.pool_max_conns)
  private_url = format("postgres://%s:%s@%s:5432/%s?sslmode=require&pool_max_conns=%d",
    local.db_user, local.db_password_in_url, google_sql_database_instance.this.private_ip_address,
  local.database, var.pool_max_conns)
}

resource "google_sql_database_instance" "this" {
  project             = var.project_id
  region              = var.region
  name                = var.name
  database_version    = var.db_version
  deletion_protection = var.db_deletion_protection

  settings {
    tier                        = var.db_tier
    edition                     = "ENTERPRISE"
    availability_type           = var.db_high_availability ? "REGIONAL" : "ZONAL"
    disk_size                   = var.db_disk_size_gb
    disk_autoresize             = true
    deletion_protection_enabled = var.db_deletion_protection
    # Through the socket, only the Cloud SQL connectors may connect.
    connector_enforcement = local.private ? "NOT_REQUIRED" : "REQUIRED"

    ip_configuration {
      ipv4_enabled    = !local.private
      private_network = var.private_network
      ssl_mode        = "ENCRYPTED_ONLY"
    }

    backup_configuration {
      enabled                        = true
      point_in_time_recovery_enabled = true
    }

    database_flags {
      name  = "max_connections"
      value = tostring(local.max_connections)
    }
  }
}

resource "google_sql_database" "sluice" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = local.database
}

# A built-in user: a member of cloudsqlsuperuser, which owns the database
# Cloud SQL creates, so it may CREATE in schema public (which sluice needs
# on every start) and owns the tables it makes.
resource "google_sql_user" "sluice" {
  project  = var.project_id
  instance = google_sql_database_instance.this.name
  name     = local.db_user
  password = var.db_password
}

# Connect through the Cloud SQL connector, to this instance only.
resource "google_project_iam_member" "cloudsql_client" {
  count = local.private ? 0 : 1

  project = var.project_id
  role    = "roles/cloudsql.client"
  member  = var.member

  condition {
    title       = "only-${var.name}"
    description = "The sluice database instance only."
    expression  = "resource.name == \"${local.instance_path}\" && resource.type == \"sqladmin.googleapis.com/Instance\""
  }
}
