variable "project_id" {
  description = "Google Cloud project."
  type        = string
}

variable "region" {
  description = "Region of the service."
  type        = string
  default     = "europe-west1"
}

variable "database_location" {
  description = "Firestore location (a region, or eur3 / nam5)."
  type        = string
  default     = "eur3"
}

variable "image" {
  description = "The sluice container image."
  type        = string
}

variable "access_keys" {
  description = "AKID:SECRET[,...] for SigV4."
  type        = string
  sensitive   = true
}

variable "maintenance_token" {
  description = "Maintenance bearer token (openssl rand -hex 32)."
  type        = string
  sensitive   = true
}
