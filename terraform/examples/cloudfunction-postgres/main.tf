# sluice as a Cloud Function (2nd gen) with Cloud SQL for PostgreSQL. Zip
# the repository first (git archive --format zip -o sluice-source.zip
# HEAD); the secrets come in as variables (TF_VAR_access_keys,
# TF_VAR_maintenance_token, TF_VAR_db_password), never in a file here.

provider "google" {
  project = var.project_id
  region  = var.region
}

module "sluice" {
  source = "../../modules/cloudfunction-postgres"

  project_id        = var.project_id
  region            = var.region
  name              = "sluice-cfpg"
  source_zip        = var.source_zip
  access_keys       = var.access_keys
  maintenance_token = var.maintenance_token
  db_password       = var.db_password
  pubsub_wakeups    = var.pubsub_wakeups
}
