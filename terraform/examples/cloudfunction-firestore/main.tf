# sluice as a Cloud Function (2nd gen) with Firestore. Zip the repository
# first (git archive --format zip -o sluice-source.zip HEAD); the secrets
# come in as variables (TF_VAR_access_keys, TF_VAR_maintenance_token).

provider "google" {
  project = var.project_id
  region  = var.region
}

module "sluice" {
  source = "../../modules/cloudfunction-firestore"

  project_id        = var.project_id
  region            = var.region
  name              = "sluice-cf"
  source_zip        = var.source_zip
  access_keys       = var.access_keys
  maintenance_token = var.maintenance_token
  database_location = var.database_location
}
