# sluice on Cloud Run with Cloud SQL for PostgreSQL. The secrets come in as
# variables (TF_VAR_access_keys, TF_VAR_maintenance_token, TF_VAR_db_password),
# never in a file here.

provider "google" {
  project = var.project_id
  region  = var.region
}

module "sluice" {
  source = "../../modules/cloudrun-postgres"

  project_id        = var.project_id
  region            = var.region
  name              = "sluice-pg"
  image             = var.image
  access_keys       = var.access_keys
  maintenance_token = var.maintenance_token
  db_password       = var.db_password
  pubsub_wakeups    = var.pubsub_wakeups

  extra_env = {
    SLUICE_LOG_FORMAT = "json"
  }
}
